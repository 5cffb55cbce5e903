"""Data files: species and kinetics parameters, each number with its source."""
