#!/bin/sh
# Stand-in for logger: each call becomes a line of $STUB_LOG.
echo "logger $*" >> "$STUB_LOG"
