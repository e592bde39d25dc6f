package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/gateway"
)

func newRunCmd(a *app) *cobra.Command {
	var file, format, level string
	cmd := &cobra.Command{
		Use:   "run -c FILE",
		Short: "Run the gateway: SNI listeners, CONNECT, DNS responder, admin API",
		Long: `Run the gateway with the configuration FILE until SIGTERM or SIGINT.

The first log line names the version and the configuration file. SIGHUP (or a
change of FILE on disk) reloads the configuration: an invalid new file is
rejected with a log line and the running configuration stays in force, and
established connections are never cut. SIGHUP also reopens the access log file
(log.access) for logrotate. SIGTERM and SIGINT stop accepting, turn /readyz to
503 and let connections finish for up to timeouts.drain, then exit 0; SIGQUIT
closes every connection at once.

The process log goes to standard error, in text or JSON, one line per event;
the connection lines go where log.access says.`,
		Example: `  snigate run -c /etc/snigate/snigate.yaml
  snigate run -c snigate.yaml --log-format json --log-level debug`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("-c FILE is required")
			}
			logger, err := gateway.NewLogger(a.stderr, format, level)
			if err != nil {
				return usageErrorf("%v", err)
			}
			g, err := gateway.New(gateway.Options{ConfigFile: file, Logger: logger, LogFormat: format})
			if err != nil {
				return failed(err)
			}
			return failed(g.Run(context.Background()))
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "configuration file (required)")
	cmd.Flags().StringVar(&format, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}
