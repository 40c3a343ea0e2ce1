"""What goes with a prompt: attachments, AGENTS.md, skills and prompt templates."""
