#!/bin/sh
# snigate prerm: stop the gateway before its files go (not on upgrade).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop snigate.service snigate.socket >/dev/null 2>&1 || true
fi
exit 0
