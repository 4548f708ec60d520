"""Headless Chromium driving Label Studio's labeling page the way an annotator does."""
