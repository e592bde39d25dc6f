package sni

import "io"

// TLS alert descriptions snigate sends before the handshake starts
// (RFC 8446 section 6).
const (
	alertHandshakeFailure  = 40
	alertAccessDenied      = 49
	alertInternalError     = 80
	alertUnrecognizedName  = 112
	alertLevelFatal        = 2
	recordTypeAlert        = 0x15
	defaultAlertRecordVers = 0x0301
)

// alertRecord returns a fatal TLS alert record. version is the record
// version the client used in its first record, so that old and new clients
// alike parse the alert (0 means TLS 1.0, which every client accepts).
func alertRecord(version uint16, desc uint8) []byte {
	if version == 0 {
		version = defaultAlertRecordVers
	}
	return []byte{recordTypeAlert, byte(version >> 8), byte(version), 0, 2, alertLevelFatal, desc}
}

// writeAlert writes one fatal alert record to w.
func writeAlert(w io.Writer, version uint16, desc uint8) error {
	_, err := w.Write(alertRecord(version, desc))
	return err
}
