"""Model evaluation: runs a model on an exported benchmark with the ComplexEval protocol and scores it."""
