"""Tables written for spreadsheets: text that a spreadsheet would run as a formula is neutralised.

A CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is read by Excel, LibreOffice and Google Sheets as a formula
(``=HYPERLINK(...)``, ``=cmd|...``): a dataset's text, written back out, could
run on the reader's machine. Such a text cell gets a leading apostrophe, which
spreadsheets show as text and do not evaluate (OWASP's advice for CSV
injection). Text that is a plain number (``-12.5``) is left as it is.
"""

from __future__ import annotations

import pandas as pd

__all__ = ["FORMULA_STARTS", "neutralise_formulas"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formulas(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``(copy, cells)``: ``frame`` with every text cell a spreadsheet would evaluate prefixed with ``'``, and how many were."""
    out = frame.copy()
    changed = 0
    for column in out.columns:
        values = out[column]
        if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
            continue
        text = values.map(lambda cell: isinstance(cell, str) and cell.startswith(FORMULA_STARTS) and not _is_number(cell))
        if text.any():
            out[column] = values.astype(object).where(~text, "'" + values[text].astype(str))
            changed += int(text.sum())
    return out, changed


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
