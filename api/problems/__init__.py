"""Problems: the documentation behind each problem ``type`` URI."""
