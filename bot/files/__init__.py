"""Files people share in a thread, and files the bot posts there.

``names`` makes a platform's file name safe to store; ``kinds`` tells what a file is and
reads it (text, images); ``intake`` saves what a message brought into the thread's workspace
and words it for the model; ``pending`` fetches the files of an accepted message in its turn
(so a restart fetches them again); ``pdf`` reads a PDF in a process of its own, within bounds,
and ``pdf_pages`` is that process (the home of ``pypdf``).
"""
