package promquery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// maxDetailLength bounds what of an error response's body a message
// quotes (a proxy may answer with a whole HTML page).
const maxDetailLength = 200

// classify turns a query's error into an *analysis.QueryError: Invalid
// when Prometheus refused the query itself (its message says why and it
// fails until the spec changes), Unavailable for everything the same query
// may survive later: no connection, a timeout, a 5xx, refused credentials,
// an answer that is not Prometheus's.
func classify(ctx context.Context, err error, timeout time.Duration) *analysis.QueryError {
	unavailable := func(format string, args ...any) *analysis.QueryError {
		return &analysis.QueryError{Kind: analysis.QueryUnavailable, Message: fmt.Sprintf(format, args...)}
	}
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) {
		switch {
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
			return unavailable("Prometheus did not answer within %s", timeout)
		case errors.Is(err, context.Canceled):
			return unavailable("the query was canceled")
		default:
			return unavailable("Prometheus is unreachable: %v", err)
		}
	}
	switch apiErr.Type {
	case v1.ErrBadData, v1.ErrExec:
		// 400 and 422: the query does not parse, or cannot be executed
		// (many-to-many matching, too many samples).
		return &analysis.QueryError{Kind: analysis.QueryInvalid, Message: apiErr.Msg}
	case v1.ErrTimeout, v1.ErrCanceled:
		return unavailable("Prometheus gave up on the query: %s", apiErr.Msg)
	case v1.ErrBadResponse:
		if strings.Contains(apiErr.Msg, "unexpected value type") {
			// A string result: valid PromQL, but nothing to judge.
			return &analysis.QueryError{Kind: analysis.QueryInvalid, Message: "the query returned " + apiErr.Msg + "; a number or series were expected"}
		}
		return unavailable("Prometheus answered with something else than its API (%s%s)", apiErr.Msg, detail(apiErr.Detail))
	case v1.ErrClient:
		return unavailable("Prometheus refused the request (%s%s): check the URL and the credentials", apiErr.Msg, detail(apiErr.Detail))
	default:
		return unavailable("Prometheus answered with an error (%s%s)", apiErr.Msg, detail(apiErr.Detail))
	}
}

// detail quotes the start of an error response's body.
func detail(body string) string {
	body = strings.Join(strings.Fields(body), " ")
	if body == "" {
		return ""
	}
	if len(body) > maxDetailLength {
		body = strings.ToValidUTF8(body[:maxDetailLength], "") + "..."
	}
	return ": " + body
}

// withSide says which of a measurement's queries failed.
func withSide(err error, side string) error {
	var qe *analysis.QueryError
	if errors.As(err, &qe) {
		return &analysis.QueryError{Kind: qe.Kind, Message: side + ": " + qe.Message}
	}
	return fmt.Errorf("%s: %w", side, err)
}
