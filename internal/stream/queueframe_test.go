package stream

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A queue_message frame written by hand decodes to what marshalling the
// frame would give, whatever the consumer id holds.
func TestEncodeQueueMessage_IsTheMarshalledFrame(t *testing.T) {
	delivery := json.RawMessage(`{"id":7,"sender":"ann","body":"a \"quoted\" <b>\u2028","receipt":"r1"}`)
	for _, id := range []string{"c1", `we"ird\id`, "<script>", "é\u2028"} {
		got := EncodeQueueMessage(id, delivery)
		want, err := json.Marshal(struct {
			Type     string          `json:"type"`
			Queue    string          `json:"queue"`
			Delivery json.RawMessage `json:"delivery"`
		}{TypeQueueMessage, id, delivery})
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("id %q: %s is not JSON: %v", id, got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("id %q: %s, want %s", id, got, want)
		}
	}
}
