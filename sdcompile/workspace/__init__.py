"""The workspace (.sdcompile/): per model/op artifacts and the lifecycle state each phase records."""
