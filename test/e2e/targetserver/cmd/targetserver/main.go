// Command targetserver serves the end-to-end suite's target endpoint: run it
// where the Kargo controller can reach it and pass its URL to the suite as
// E2E_TARGET_URL.
//
//	go run ./test/e2e/targetserver/cmd/targetserver -listen 127.0.0.1:8089
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8089", "Address to listen on.")
	flag.Parse()
	s := &targetserver.Server{Log: log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds|log.LUTC)}
	srv := &http.Server{Addr: *listen, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("target server listening on http://%s", *listen)
	log.Fatal(srv.ListenAndServe())
}
