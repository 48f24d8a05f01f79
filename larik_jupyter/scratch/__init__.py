"""Code run to check or replay: a scratch copy of the project (`copy`), the guard installed in
the kernel before its first cell (`guard`), and the one driver of such a kernel (`kernel`)."""
