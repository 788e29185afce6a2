"""The ground floor: the settings and the metrics, which every storey reads."""
