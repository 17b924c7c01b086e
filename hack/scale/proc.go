package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// controllerProc is kargo-fleet's controller running as its own process, so
// its memory and API traffic are its own and not the simulator's or the
// harness's.
type controllerProc struct {
	cmd        *exec.Cmd
	metricsURL string
	done       chan error
	rss        *rssSampler
}

// freePort returns a loopback address nobody listens on right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startController runs `kargo-fleet controller` as the controller user and
// waits until it is ready and its step server listens.
func startController(ctx context.Context, env *fleetenv.Env, bin, dir string, concurrency int, goMemLimit string, extra []string) (*controllerProc, error) {
	kubeconfig := filepath.Join(dir, "controller.kubeconfig")
	if err := fleetenv.WriteKubeconfig(env.ControllerConfig(), kubeconfig); err != nil {
		return nil, err
	}
	metricsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "scale-controller.log"))
	if err != nil {
		return nil, err
	}
	args := []string{"controller",
		"--kubeconfig", kubeconfig,
		"--leader-elect=false", "--webhooks=false",
		// The harness scrapes the metrics of its own loopback process.
		"--metrics-bind-address", metricsAddr, "--metrics-secure=false",
		"--health-probe-bind-address", probeAddr,
		"--step-server-url", env.StepServerURL,
		"--kube-api-qps", "500", "--kube-api-burst", "1000",
		"--max-concurrent-reconciles", strconv.Itoa(concurrency),
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), env.StepServerEnv()...)
	if goMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+goMemLimit)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: an interrupt of the harness reaches it only
	// through stop, after the harness has read what it needs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting %s: %w", bin, err)
	}
	p := &controllerProc{cmd: cmd, metricsURL: "http://" + metricsAddr + "/metrics", done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		logFile.Close()
	}()
	p.rss = newRSSSampler(cmd.Process.Pid, 200*time.Millisecond)
	stepAddr := strings.TrimPrefix(env.StepServerURL, "http://")
	ready := func() error {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		c, err := net.DialTimeout("tcp", stepAddr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ready()
		if err == nil {
			return p, nil
		}
		select {
		case werr := <-p.done:
			return nil, fmt.Errorf("the controller exited (%w) before it was ready; see %s", werr, logFile.Name())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.stop())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("the controller was not ready within a minute: %w", err), p.stop())
		}
	}
}

// stop ends the controller (SIGTERM, then SIGKILL after 20 s).
func (p *controllerProc) stop() error {
	p.rss.stop()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(20 * time.Second):
		return p.cmd.Process.Kill()
	}
}

// cpuSeconds is the controller's user+system CPU time so far.
func (p *controllerProc) cpuSeconds() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// rssSampler reads VmRSS and VmHWM of a process from /proc every interval
// and keeps the peaks, overall and since the last mark.
type rssSampler struct {
	mu       sync.Mutex
	peak     int64 // highest VmRSS seen, bytes
	hwm      int64 // last VmHWM read, bytes
	sincePk  int64 // highest VmRSS since the last mark
	last     int64
	samples  int
	quit     chan struct{}
	finished chan struct{}
}

func newRSSSampler(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{quit: make(chan struct{}), finished: make(chan struct{})}
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		defer close(s.finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.read(path)
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) read(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	var rss, hwm int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	s.last = rss
	s.peak = max(s.peak, rss)
	s.sincePk = max(s.sincePk, rss)
	if hwm > 0 {
		s.hwm = hwm
	}
}

// mark returns the peak VmRSS since the previous mark and starts a new span.
func (s *rssSampler) mark() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	pk := s.sincePk
	s.sincePk = s.last
	return pk
}

// peaks returns the highest VmRSS sampled, the kernel's VmHWM and the
// current VmRSS.
func (s *rssSampler) peaks() (peak, hwm, current int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.hwm, s.last
}

func (s *rssSampler) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.finished
}
