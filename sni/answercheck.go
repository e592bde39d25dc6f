package sni

import (
	"log/slog"
	"slices"
)

// AnswerCheckALPN is the protocol name the DNS responder's answer check
// (dns.answer_check) offers in its ClientHello, after h2 and http/1.1, so
// that the gateways it checks (this one included) tell its connections
// from the nodes'. dnsresponder.CheckALPN is the same name.
const AnswerCheckALPN = "snigate-answer-check"

// resultAnswerCheck is the result of an answer check's connection: it
// leaves once it has the ServerHello, which a node's connection would end
// as client_error (a bridge route's handshake) or ok (a splice route's
// tunnel). Its connection line is logged at Debug, and it is counted
// apart, so that the checks of several gateways are not client failures.
const resultAnswerCheck = "answer_check"

// answerCheckResult is result, or resultAnswerCheck for a connection
// whose ClientHello offered AnswerCheckALPN and that ended the way a check
// does (client_error or ok). Any other result is kept: it tells why the
// check fails (no_upstream, unknown_sni, ...).
func (ss *session) answerCheckResult(result string) string {
	if (result == resultClientError || result == resultOK) && slices.Contains(ss.hello.ALPN, AnswerCheckALPN) {
		return resultAnswerCheck
	}
	return result
}

// loggedOutcome is how the session ended as counted and logged, with the
// level of its connection line: Info, or Debug for an answer check,
// without the error its leaving after the ServerHello caused.
func (ss *session) loggedOutcome() (string, slog.Level, error) {
	result, err := ss.outcome()
	if result = ss.answerCheckResult(result); result == resultAnswerCheck {
		return result, slog.LevelDebug, nil
	}
	return result, slog.LevelInfo, err
}
