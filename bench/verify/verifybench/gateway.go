package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// gateway is the snigate process.
type gateway struct {
	cmd  *exec.Cmd
	addr string
	log  string
	done chan error
}

const config = `listen:
  tls: [%[1]q]
  admin: %[2]q
routes:
  - name: plain
    sni: ["plain.bench"]
    mode: bridge
    upstreams: [%[3]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: cert.pem, key: key.pem}
    upstream_tls: {ca: cert.pem, server_name: registry.bench}
    http: {}
  - name: verify
    sni: ["verify.bench"]
    mode: bridge
    upstreams: [%[3]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: cert.pem, key: key.pem}
    upstream_tls: {ca: cert.pem, server_name: registry.bench}
    http:
      verify: {cosign: {keys: [cosign.pub]}}
`

func startSnigate(bin, dir, upstream string) (*gateway, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, addr, admin, upstream)), 0o600); err != nil {
		return nil, err
	}
	g := &gateway{addr: addr, log: filepath.Join(dir, "snigate.log"), done: make(chan error, 1)}
	out, err := os.Create(g.log)
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(bin, "run", "-c", cfg, "--log-level", "warn")
	g.cmd.Stdout, g.cmd.Stderr = out, out
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { g.done <- g.cmd.Wait(); out.Close() }()
	return g, nil
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// err reports a gateway that exited during the run.
func (g *gateway) err() error {
	select {
	case err := <-g.done:
		g.done <- err
		return errors.Join(errors.New("snigate exited during the run"), err)
	default:
		return nil
	}
}

func (g *gateway) tail() string {
	b, _ := os.ReadFile(g.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
