package targetserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Client drives a target server over HTTP.
type Client struct {
	// URL is the server's base URL.
	URL  string
	HTTP *http.Client
}

// SetRules replaces the server's rules.
func (c *Client) SetRules(ctx context.Context, rules []Rule) error {
	return c.put(ctx, "/rules", "rules", rules)
}

// SetErrors replaces the error ratios of the server's traffic.
func (c *Client) SetErrors(ctx context.Context, e Errors) error {
	return c.put(ctx, "/errors", "error ratios", e)
}

// put sends v as JSON to path, which answers 204 No Content.
func (c *Client) put(ctx context.Context, path, what string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("error setting the target server's %s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("error setting the target server's %s: %s: %s", what, resp.Status, msg)
	}
	return nil
}

// Calls returns the server's call log.
func (c *Client) Calls(ctx context.Context) ([]Call, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/calls", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("error reading the target server's calls: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("error reading the target server's calls: %s", resp.Status)
	}
	var calls []Call
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		return nil, fmt.Errorf("error decoding the target server's calls: %w", err)
	}
	return calls, nil
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}
