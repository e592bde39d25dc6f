#!/bin/sh
# snigate postrm: systemd forgets the units. The snigate user and
# /etc/snigate's certificates are left, as Debian leaves system users.
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
