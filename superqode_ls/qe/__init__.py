"""The QE pipeline: request -> resolve -> sandbox -> roles -> verify -> filter -> report."""
