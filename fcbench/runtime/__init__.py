"""How a stage runs safely: its outputs guarded, its progress shown, its memory bounded, and the
servers it starts on loopback."""
