"""Moving tasks in and out of Label Studio: push, pull, and the export read as a stream."""
