"""STAGE export: validated samples -> Parquet splits in Hugging Face layout, the dataset card and
copies in other projects' formats (`single`; `kind: conversation` in `conversation`)."""
