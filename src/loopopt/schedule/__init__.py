"""Choosing schedules: nest summaries, the candidate space, the cost model, measured tuning."""
