"""Sub-agents: ``delegate_task`` runs the engine on a mini-session for one task
(:mod:`bot.delegate.tool`), waits for its approvals inline (:mod:`bot.approvals.inline`), records
them so that whatever cuts the wait off closes them (:mod:`bot.approvals.inline_waits`), and shows its
progress in the thread (:mod:`bot.delegate.progress`)."""
