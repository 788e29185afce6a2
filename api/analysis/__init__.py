"""Analysis: values and every legal move of a position, cached."""
