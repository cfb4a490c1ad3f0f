// A Go service's test against the kipwire dev broker: the control API through net/http, the
// data through franz-go. tests/mockbroker/control/test_other_languages.py starts
// `kipwire-broker serve --control-port 0` and runs this with KIPWIRE_BOOTSTRAP and
// KIPWIRE_CONTROL set.
package gostory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topic = "go-story"

type control struct {
	t    *testing.T
	base string
}

// call sends one request to the control API and decodes its JSON answer into out.
func (c control) call(method, path string, body any, wantStatus int, out any) {
	c.t.Helper()
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(payload))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		c.t.Fatalf("%s %s: not JSON: %v", method, path, err)
	}
	if resp.StatusCode != wantStatus {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, wantStatus, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

type broker struct {
	ID    int    `json:"id"`
	State string `json:"state"`
}

type partition struct {
	Leader        int   `json:"leader"`
	ISR           []int `json:"isr"`
	HighWatermark int64 `json:"high_watermark"`
}

type fault struct {
	ID        int `json:"id"`
	Fired     int `json:"fired"`
	Remaining int `json:"remaining"`
}

func produce(ctx context.Context, client *kgo.Client, value string) error {
	return client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func TestStoryThroughTheControlAPI(t *testing.T) {
	bootstrap, base := os.Getenv("KIPWIRE_BOOTSTRAP"), os.Getenv("KIPWIRE_CONTROL")
	if bootstrap == "" || base == "" {
		t.Skip("KIPWIRE_BOOTSTRAP and KIPWIRE_CONTROL are set by test_other_languages.py")
	}
	c := control{t, base}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var cluster struct {
		Brokers []broker `json:"brokers"`
	}
	c.call("GET", "/cluster", nil, 200, &cluster)
	if len(cluster.Brokers) != 3 {
		t.Fatalf("brokers: %+v", cluster.Brokers)
	}
	c.call("POST", "/topics", map[string]any{"name": topic, "partitions": 1, "replication_factor": 3}, 201, nil)

	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := produce(ctx, client, "a"); err != nil {
		t.Fatalf("first produce: %v", err)
	}

	// stop the leader: the controller elects another, and produce goes on there
	var before partition
	c.call("GET", fmt.Sprintf("/topics/%s/partitions/0", topic), nil, 200, &before)
	var stopped broker
	c.call("POST", fmt.Sprintf("/brokers/%d/stop", before.Leader), map[string]any{"clean": true}, 200, &stopped)
	if stopped.State != "stopped" {
		t.Fatalf("after stop: %+v", stopped)
	}
	c.call("POST", fmt.Sprintf("/brokers/%d/stop", before.Leader), nil, 409, nil)
	var after partition
	c.call("GET", fmt.Sprintf("/topics/%s/partitions/0", topic), nil, 200, &after)
	if after.Leader == before.Leader || after.Leader == -1 {
		t.Fatalf("leader %d before the stop, %d after", before.Leader, after.Leader)
	}
	if err := produce(ctx, client, "b"); err != nil {
		t.Fatalf("produce after the leader stopped: %v", err)
	}

	// one injected error fails one produce, and the handle says it fired
	var injected fault
	c.call("POST", "/faults/errors", map[string]any{
		"api_key": "PRODUCE", "error_code": "TOPIC_AUTHORIZATION_FAILED", "count": 1,
	}, 200, &injected)
	if err := produce(ctx, client, "c"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce under the injected error: %v", err)
	}
	var seen fault
	c.call("GET", fmt.Sprintf("/faults/errors/%d", injected.ID), nil, 200, &seen)
	if seen.Fired != 1 || seen.Remaining != 0 {
		t.Fatalf("the injection's handle: %+v", seen)
	}
	if err := produce(ctx, client, "d"); err != nil {
		t.Fatalf("produce once the injection is spent: %v", err)
	}

	// start it again: it registers, and every broker runs
	var started broker
	c.call("POST", fmt.Sprintf("/brokers/%d/start", before.Leader), nil, 200, &started)
	if started.State != "running" {
		t.Fatalf("after start: %+v", started)
	}
	c.call("GET", "/cluster", nil, 200, &cluster)
	for _, b := range cluster.Brokers {
		if b.State != "running" {
			t.Fatalf("after start: %+v", cluster.Brokers)
		}
	}

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var values []string
	for len(values) < 3 && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	if strings.Join(values, ",") != "a,b,d" {
		t.Fatalf("consumed %v, want a, b, d (c was refused)", values)
	}
	var last partition
	c.call("GET", fmt.Sprintf("/topics/%s/partitions/0", topic), nil, 200, &last)
	if last.HighWatermark != 3 {
		t.Fatalf("high watermark %d, want 3", last.HighWatermark)
	}
}
