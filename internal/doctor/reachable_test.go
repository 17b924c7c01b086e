package doctor

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestInstallAgainstAnUnreachableAPIServer: one result says the API server
// cannot be reached, instead of every check failing with the same network
// error.
func TestInstallAgainstAnUnreachableAPIServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close(), "nothing listens there any more")
	c, err := client.New(&rest.Config{Host: "https://" + addr, Timeout: 2 * time.Second}, client.Options{})
	require.NoError(t, err)
	results := New(c, Options{}).Install(context.Background())
	require.Len(t, results, 1)
	require.Equal(t, CheckAPIServer, results[0].Check)
	require.Equal(t, StatusFail, results[0].Status)
	require.Contains(t, results[0].Message, "cannot reach the API server")
	require.Contains(t, results[0].Message, addr)

	// An API server that answers, even with a refusal, is reachable.
	require.NoError(t, New(fake.NewClientBuilder().Build(), Options{}).Reachable(context.Background()))
}
