"""The notes' figures, one module per chapter: tools/figures.py names them all and draws them."""
