"""Phase 6b: whether a fusion that hit also gains."""
