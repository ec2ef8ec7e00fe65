"""Rehydration: choosing what a task needs from the project's memory, under a token budget.

Pure selection logic plus its SQL candidate query. Token counting lives here
because budgets are counted in the tokens an agent will actually receive.
"""
