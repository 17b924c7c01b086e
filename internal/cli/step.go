package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// Environment variables `kargo-fleet step` reads when the matching flag is
// not given; a CustomPromotionStep sets them from ${{ ctx.* }} and
// ${{ config.* }}.
const (
	envStepServer    = "KARGO_FLEET_SERVER"
	envStepCAFile    = "KARGO_FLEET_CA_FILE"
	envStepInsecure  = "KARGO_FLEET_INSECURE_SKIP_TLS_VERIFY"
	envStepToken     = "KARGO_FLEET_TOKEN"
	envStepTokenFile = "KARGO_FLEET_TOKEN_FILE"
	envStepProject   = "KARGO_FLEET_PROJECT"
	envStepStage     = "KARGO_FLEET_STAGE"
	envStepPromotion = "KARGO_FLEET_PROMOTION"
	envStepFreight   = "KARGO_FLEET_FREIGHT"
	envStepAlias     = "KARGO_FLEET_ALIAS"
	envStepActor     = "KARGO_FLEET_ACTOR"
	envStepRollback  = "KARGO_FLEET_ROLLBACK"
	envStepUIBaseURL = "KARGO_FLEET_UI_BASE_URL"
	envStepConfig    = "KARGO_FLEET_CONFIG"
	envKargoOutput   = "KARGO_OUTPUT"

	defaultStepServer = "https://kargo-fleet-steps.kargo-fleet.svc:9090"
)

// errStepFailed is returned when the step ran and Failed.
var errStepFailed = errors.New("step failed")

// stepOptions configures `kargo-fleet step <name>`.
type stepOptions struct {
	name         string
	server       string
	token        string
	tokenFile    string
	caFile       string
	insecure     bool
	req          stepserver.Request
	rollback     string
	configJSON   string
	sets         []string
	pollInterval time.Duration
	timeout      time.Duration
	maxErrors    int
	outputPath   string

	out, errOut io.Writer
	client      *http.Client
	clock       clock.Clock
}

func newStepCommand(out, errOut io.Writer) *cobra.Command {
	o := &stepOptions{out: out, errOut: errOut, clock: clock.RealClock{}}
	cmd := &cobra.Command{
		Use:       "step <fleet-wave|fleet-rollback|fleet-gate|fleet-status>",
		Short:     "Run a fleet step against the step server (Akuity Platform custom steps)",
		ValidArgs: []string{steps.WaveStepName, steps.RollbackStepName, steps.GateStepName, steps.StatusStepName},
		Long: "Runs one fleet step the way a Kargo http step does: posts the step request to the kargo-fleet " +
			"step server, polls until the step Succeeded or Failed, and writes the step's outputs as a JSON " +
			"object to $KARGO_OUTPUT (stdout when unset). fleet-wave and fleet-rollback first start the work, " +
			"then wait for it. Exits non-zero when the step Failed.\n\n" +
			"Every flag falls back to an environment variable (KARGO_FLEET_SERVER, KARGO_FLEET_TOKEN, " +
			"KARGO_FLEET_PROJECT, KARGO_FLEET_STAGE, KARGO_FLEET_PROMOTION, KARGO_FLEET_FREIGHT, " +
			"KARGO_FLEET_ALIAS, KARGO_FLEET_ACTOR, KARGO_FLEET_ROLLBACK, KARGO_FLEET_CONFIG, ...).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func (o *stepOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.server, "server", stepEnvOr(envStepServer, defaultStepServer), "URL of the step server.")
	f.StringVar(&o.token, "token", os.Getenv(envStepToken), "The project's step token (Secret kargo-fleet-step-token).")
	f.StringVar(&o.tokenFile, "token-file", os.Getenv(envStepTokenFile), "File holding the step token.")
	f.StringVar(&o.caFile, "ca-file", os.Getenv(envStepCAFile), "CA bundle to verify an https step server with "+
		"(the ca.crt of the Secret <release>-steps-tls).")
	insecure, _ := strconv.ParseBool(os.Getenv(envStepInsecure))
	f.BoolVar(&o.insecure, "insecure-skip-tls-verify", insecure, "Do not verify the step server's certificate.")
	f.StringVar(&o.req.Project, "project", os.Getenv(envStepProject), "Kargo Project (ctx.project).")
	f.StringVar(&o.req.Stage, "stage", os.Getenv(envStepStage), "Stage being promoted (ctx.stage).")
	f.StringVar(&o.req.Promotion, "promotion", os.Getenv(envStepPromotion), "Calling Promotion (ctx.promotion).")
	f.StringVar(&o.req.Freight, "freight", os.Getenv(envStepFreight), "Freight being promoted (ctx.targetFreight.name).")
	f.StringVar(&o.req.Alias, "alias", os.Getenv(envStepAlias), "Step alias (ctx.meta.step.alias); default: the step name.")
	f.StringVar(&o.req.Actor, "actor", os.Getenv(envStepActor), "Who started the Promotion (ctx.meta.promotion.actor).")
	f.StringVar(&o.rollback, "rollback", os.Getenv(envStepRollback), "Whether the Promotion is a rollback (ctx.meta.promotion.rollback).")
	f.StringVar(&o.req.UIBaseURL, "ui-base-url", os.Getenv(envStepUIBaseURL), "Kargo UI URL (ctx.uiBaseUrl), for links.")
	f.StringVar(&o.configJSON, "config", os.Getenv(envStepConfig), "Step config as a JSON object (see docs/steps.md).")
	f.StringArrayVar(&o.sets, "set", nil, "Set one config field, key=value; repeatable; applied over --config.")
	f.DurationVar(&o.pollInterval, "poll-interval", 5*time.Second, "Time between polls while the step is Running.")
	f.DurationVar(&o.timeout, "timeout", 0, "Give up after this long; 0 waits as long as the step runs.")
	f.IntVar(&o.maxErrors, "max-errors", 10, "Consecutive connection errors before giving up.")
	f.StringVar(&o.outputPath, "output", os.Getenv(envKargoOutput), "File the outputs are written to; default $KARGO_OUTPUT, else stdout.")
}

func stepEnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (o *stepOptions) validate() error {
	switch o.name {
	case steps.WaveStepName, steps.RollbackStepName, steps.GateStepName, steps.StatusStepName:
	default:
		return fmt.Errorf("unknown step %q: use fleet-wave, fleet-rollback, fleet-gate or fleet-status", o.name)
	}
	if o.req.Alias == "" {
		o.req.Alias = o.name
	}
	if o.rollback != "" {
		b, err := strconv.ParseBool(o.rollback)
		if err != nil {
			return fmt.Errorf("--rollback: %q is not a boolean", o.rollback)
		}
		o.req.Rollback = b
	}
	if o.token == "" && o.tokenFile != "" {
		raw, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return fmt.Errorf("error reading --token-file: %w", err)
		}
		o.token = strings.TrimSpace(string(raw))
	}
	if o.token == "" {
		return fmt.Errorf("a step token is required: --token, --token-file or %s", envStepToken)
	}
	if o.pollInterval <= 0 {
		return fmt.Errorf("--poll-interval must be positive")
	}
	if o.maxErrors < 1 {
		return fmt.Errorf("--max-errors must be at least 1")
	}
	config, err := o.buildConfig()
	if err != nil {
		return err
	}
	o.req.Config = config
	if err := o.req.Validate(); err != nil {
		return fmt.Errorf("invalid step context: %w", err)
	}
	return nil
}

// buildConfig merges --config and --set into the step's JSON config. --set
// values are strings; the step server parses them by the type its schema
// declares, as it does for Kargo task variables.
func (o *stepOptions) buildConfig() (json.RawMessage, error) {
	cfg := map[string]any{}
	if strings.TrimSpace(o.configJSON) != "" {
		dec := json.NewDecoder(strings.NewReader(o.configJSON))
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("--config must be a JSON object: %w", err)
		}
		// null decodes to no map at all, and text after the object would
		// be dropped unseen.
		if cfg == nil {
			return nil, errors.New("--config must be a JSON object, not null")
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("--config must be one JSON object: it has more after the object")
		}
	}
	for _, s := range o.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value", s)
		}
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("error encoding the step config: %w", err)
	}
	return raw, nil
}

func (o *stepOptions) run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if o.client == nil {
		c, err := o.httpClient()
		if err != nil {
			return err
		}
		o.client = c
	}
	phases := []string{""}
	if o.name == steps.WaveStepName || o.name == steps.RollbackStepName {
		phases = []string{string(steps.ModeStart), string(steps.ModeWait)}
	}
	outputs := map[string]any{}
	var last stepserver.Response
	for _, phase := range phases {
		req, err := o.phaseRequest(phase)
		if err != nil {
			return err
		}
		if last, err = o.poll(ctx, req); err != nil {
			return err
		}
		maps.Copy(outputs, last.Outputs)
		if last.State != steps.StateSucceeded {
			break
		}
	}
	if err := o.writeOutputs(outputs); err != nil {
		return err
	}
	if last.State == steps.StateFailed {
		_, _ = fmt.Fprintf(o.errOut, "%s failed: %s\n", o.name, last.Message)
		return fmt.Errorf("%w: %s", errStepFailed, last.Message)
	}
	_, _ = fmt.Fprintf(o.errOut, "%s succeeded: %s\n", o.name, last.Message)
	return nil
}

// phaseRequest returns the request of one phase: for start and wait, the
// mode is set in the config and the alias gets a ::start or ::wait suffix,
// as in the shipped ClusterPromotionTasks.
func (o *stepOptions) phaseRequest(phase string) (stepserver.Request, error) {
	req := o.req
	if phase == "" {
		return req, nil
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(o.req.Config, &cfg); err != nil {
		return req, fmt.Errorf("error decoding the step config: %w", err)
	}
	cfg["mode"] = phase
	raw, err := json.Marshal(cfg)
	if err != nil {
		return req, fmt.Errorf("error encoding the step config: %w", err)
	}
	req.Config = raw
	req.Alias = o.req.Alias + "::" + phase
	return req, nil
}

// poll sends the request until the step is Succeeded or Failed. 503 and
// connection errors are retried (at most maxErrors in a row); any other
// answer is final or Running.
func (o *stepOptions) poll(ctx context.Context, req stepserver.Request) (stepserver.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return stepserver.Response{}, fmt.Errorf("error encoding the step request: %w", err)
	}
	url := strings.TrimRight(o.server, "/") + stepserver.PathPrefix + o.name
	errorsInARow := 0
	lastMessage := ""
	for {
		resp, status, err := o.send(ctx, url, body)
		switch {
		case err != nil || status == http.StatusServiceUnavailable:
			errorsInARow++
			if err == nil {
				err = errors.New(resp.Message)
			}
			if errorsInARow >= o.maxErrors {
				return stepserver.Response{}, fmt.Errorf("error calling the step server %d times in a row: %w", errorsInARow, err)
			}
			_, _ = fmt.Fprintf(o.errOut, "%s: %v; retrying\n", req.Alias, err)
		case status >= 400 && status < 500:
			return stepserver.Response{State: steps.StateFailed, Message: resp.Message, Outputs: resp.Outputs}, nil
		case status != http.StatusOK:
			return stepserver.Response{}, fmt.Errorf("step server answered HTTP %d: %s", status, resp.Message)
		default:
			errorsInARow = 0
			if resp.State.IsFinal() {
				return resp, nil
			}
			if resp.Message != lastMessage {
				_, _ = fmt.Fprintf(o.errOut, "%s: %s\n", req.Alias, resp.Message)
				lastMessage = resp.Message
			}
		}
		select {
		case <-ctx.Done():
			return stepserver.Response{}, fmt.Errorf("error waiting for %s: %w", o.name, ctx.Err())
		case <-o.clock.After(o.pollInterval):
		}
	}
}

// send posts one request and decodes the answer.
func (o *stepOptions) send(ctx context.Context, url string, body []byte) (stepserver.Response, int, error) {
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return stepserver.Response{}, 0, fmt.Errorf("error building the step request: %w", err)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Authorization", "Bearer "+o.token)
	httpResp, err := o.client.Do(httpReq)
	if err != nil {
		return stepserver.Response{}, 0, err
	}
	defer func() { _ = httpResp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(httpResp.Body, 2<<20))
	if err != nil {
		return stepserver.Response{}, httpResp.StatusCode, fmt.Errorf("error reading the step server's answer: %w", err)
	}
	var resp stepserver.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return stepserver.Response{}, httpResp.StatusCode, fmt.Errorf("step server answered HTTP %d with a body that is not JSON: %w",
			httpResp.StatusCode, err)
	}
	return resp, httpResp.StatusCode, nil
}

// httpClient returns the client for the step server.
func (o *stepOptions) httpClient() (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.insecure} //nolint:gosec // opt-in flag
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("error reading --ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", o.caFile)
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}, nil
}

// writeOutputs writes the outputs as one JSON object to the output file
// ($KARGO_OUTPUT), or to out.
func (o *stepOptions) writeOutputs(outputs map[string]any) error {
	raw, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("error encoding the step outputs: %w", err)
	}
	raw = append(raw, '\n')
	if o.outputPath == "" {
		_, err := o.out.Write(raw)
		return err
	}
	f, err := os.OpenFile(o.outputPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("error opening the output file: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		_ = f.Close()
		return fmt.Errorf("error writing the output file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("error writing the output file: %w", err)
	}
	return nil
}
