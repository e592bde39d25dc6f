package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// Routes returns the routes in force (GET /api/routes).
func (c *Client) Routes(ctx context.Context) ([]Route, error) {
	var out []Route
	if err := c.do(ctx, http.MethodGet, "/api/routes", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ConfigStatus returns the configuration in force and the last reload's
// outcome (GET /api/config).
func (c *Client) ConfigStatus(ctx context.Context) (ConfigStatus, error) {
	var out ConfigStatus
	err := c.do(ctx, http.MethodGet, "/api/config", nil, &out)
	return out, err
}

// Reload asks the gateway to reload its configuration file now (POST
// /api/reload). A rejected file is not an error: the result says
// ReloadFailure and lists the errors as `snigate check` prints them.
func (c *Client) Reload(ctx context.Context) (ReloadResult, error) {
	var out ReloadResult
	err := c.doAccepting(ctx, http.MethodPost, "/api/reload", nil, &out, http.StatusUnprocessableEntity)
	return out, err
}

// Readiness returns what /readyz answers and why (GET /api/ready).
func (c *Client) Readiness(ctx context.Context) (Readiness, error) {
	var out Readiness
	err := c.do(ctx, http.MethodGet, "/api/ready", nil, &out)
	return out, err
}

// SetReady turns the gateway's readiness switch on or off (POST
// /api/ready) and returns the readiness after the change.
func (c *Client) SetReady(ctx context.Context, on bool) (Readiness, error) {
	body, _ := json.Marshal(readyRequest{Ready: &on})
	var out Readiness
	err := c.do(ctx, http.MethodPost, "/api/ready", bytes.NewReader(body), &out)
	return out, err
}
