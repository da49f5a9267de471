"""Small dependency-free helpers: errors and exit codes, atomic writes and locks, transactions, serialization, input
checks.
"""
