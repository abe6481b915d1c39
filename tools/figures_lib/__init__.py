"""The notes' figures, one module per chapter: tools/figures.py names them all and draws them."""
from pathlib import Path

# The repository (tools/figures_lib/ is two levels down): here, not in style.py, so that figures.py
# has it without importing matplotlib.
ROOT = Path(__file__).resolve().parents[2]
