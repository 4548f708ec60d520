"""Measuring samples and files: the tables benchmark papers publish, token counts, what makes a
sample hard, and the validated file measured once per content."""
