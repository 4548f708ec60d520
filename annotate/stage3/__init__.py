"""STAGE stage3 with junior annotators: they fill the arguments of the query variants in Label Studio."""
