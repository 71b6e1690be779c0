"""Files people share in a thread, and files the bot posts there.

``names`` makes a platform's file name safe to store; ``kinds`` tells what a file is and
reads it (text, PDF text, images); ``intake`` saves what a message brought into the thread's
workspace and words it for the model; ``transfer`` is what a surface offers to move bytes.
"""
