"""What people think of the bot's answers: 👍 / 👎 on each final answer, and a line on 👎."""
