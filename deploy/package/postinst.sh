#!/bin/sh
# snigate postinst: the system user, and systemd told of the units. The
# service is not enabled or started: edit /etc/snigate/snigate.yaml, run
# `snigate check -c /etc/snigate/snigate.yaml`, then
# `systemctl enable --now snigate`.
set -e
if [ "$1" = configure ]; then
	if ! getent passwd snigate >/dev/null; then
		if command -v systemd-sysusers >/dev/null 2>&1; then
			systemd-sysusers /usr/lib/sysusers.d/snigate.conf
		else
			adduser --system --group --no-create-home --home /nonexistent --gecos "snigate SNI gateway" snigate
		fi
	fi
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
		# An upgrade: a running gateway restarts on the new binary (with
		# snigate.socket enabled, no connection is refused meanwhile).
		if [ -n "$2" ] && systemctl is-active --quiet snigate.service; then
			systemctl try-restart snigate.service || true
		fi
	fi
fi
exit 0
