package regauth

import (
	"fmt"

	"github.com/snigate/snigate/oci"
)

// RefusedError is returned by the Transport when the registry refused
// the gateway's credentials: its token service answered 401 or 403, or
// the registry still answered 401 to a request sent with a fresh token
// (or with Basic credentials). The chain answers the node 401 with
// WriteRefused; a node never sees the registry's own challenge.
type RefusedError struct {
	// By says who refused: "token service https://auth.example/token" or
	// "registry".
	By string
	// Status is the refusing answer's status code.
	Status int
}

// Error implements error; it names no credential.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("the registry refused the gateway's credentials: %s answered %d", e.By, e.Status)
}

// Is makes a RefusedError oci.ErrCredentialsRefused, so that every link
// of the chain answers it alike (401 UNAUTHORIZED).
func (e *RefusedError) Is(target error) bool { return target == oci.ErrCredentialsRefused }
