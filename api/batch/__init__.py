"""Batch evaluation: many positions in one request, inline or as a job run by workers."""
