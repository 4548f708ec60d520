"""Task <-> sample (pure: no server, no files): what an annotator sees and what their answer means."""
