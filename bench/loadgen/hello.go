package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
)

// Commands the load generator sends after its ClientHello (splice) or its
// handshake (bridge); the upstream answers each as described.
const (
	cmdEcho     = 'E' // then 64 bytes: the upstream writes them back
	cmdDownload = 'D' // the upstream writes bytes until the connection closes
	cmdIdle     = 'I' // the upstream writes one byte, then waits for EOF
)

// echoSize is the size of the echoed message of the rate scenarios.
const echoSize = 64

// captureClientHello returns the first TLS record a crypto/tls client
// (this Go version's defaults, so X25519MLKEM768 and X25519 key shares)
// sends for serverName: a real ClientHello, byte for byte.
func captureClientHello(serverName string) ([]byte, error) {
	c1, c2 := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tls.Client(c1, &tls.Config{ServerName: serverName}).Handshake()
	}()
	hello, err := readRecord(c2)
	c2.Close()
	c1.Close()
	<-done
	if err != nil {
		return nil, fmt.Errorf("capture ClientHello: %w", err)
	}
	if hello[0] != 22 || hello[5] != 1 {
		return nil, errors.New("capture ClientHello: first record is not a ClientHello")
	}
	return hello, nil
}

// readRecord reads one TLS record (5-byte header and body) from r.
func readRecord(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	rec := make([]byte, 5+n)
	copy(rec, hdr)
	if _, err := io.ReadFull(r, rec[5:]); err != nil {
		return nil, err
	}
	return rec, nil
}

// messages are the first bytes each splice scenario writes: the captured
// ClientHello followed by a command (and, for echo, its payload).
type messages struct {
	echo, download, idle []byte
	payload              []byte // the echoed 64 bytes
}

func newMessages(hello []byte) messages {
	payload := bytes.Repeat([]byte("snigate!"), echoSize/8)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return messages{
		echo:     cat(hello, []byte{cmdEcho}, payload),
		download: cat(hello, []byte{cmdDownload}),
		idle:     cat(hello, []byte{cmdIdle}),
		payload:  payload,
	}
}
