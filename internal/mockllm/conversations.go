package mockllm

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The mock serves OpenAI's Conversations API, per API key as OpenAI scopes
// conversations to the project: POST /v1/conversations (items, metadata),
// GET, POST (metadata) and DELETE /v1/conversations/{id}, GET and POST
// …/items, GET and DELETE …/items/{item} (and Azure's /openai/v1/… of
// each). A response made with `conversation` (an id, or {"id": …}) must name
// one of the key's conversations; its input items and output items are
// appended to it, and the response object names it.

// conversation is one conversation the mock keeps.
type conversation struct {
	key      string
	id       string
	created  int64
	metadata map[string]string
	items    []json.RawMessage // each with an id, oldest first
}

// conversationStore is the mock's conversations.
type conversationStore struct {
	mu   sync.Mutex
	byID map[string]*conversation
	n    int // item ids
}

// get returns the key's conversation of that id (the lock is held).
func (cs *conversationStore) get(key, id string) *conversation {
	c := cs.byID[id]
	if c == nil || c.key != key {
		return nil
	}
	return c
}

// withIDs gives each item without an id one (the lock is held).
func (cs *conversationStore) withIDs(items []map[string]any) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		if _, ok := it["id"]; !ok {
			cs.n++
			it["id"] = "msg_conv" + strconv.Itoa(cs.n)
		}
		if _, ok := it["type"]; !ok {
			it["type"] = "message"
		}
		b, _ := json.Marshal(it)
		out = append(out, b)
	}
	return out
}

// append adds a response's input and output items to the key's
// conversation id; false when there is none.
func (cs *conversationStore) append(key, id string, input []json.RawMessage, output []responsesOutputItem) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.get(key, id)
	if c == nil {
		return false
	}
	c.items = append(c.items, input...)
	for _, it := range output {
		b, _ := json.Marshal(it)
		c.items = append(c.items, b)
	}
	return true
}

// exists reports whether the key has the conversation id.
func (cs *conversationStore) exists(key, id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.get(key, id) != nil
}

// conversationRef reads a request's conversation: an id or {"id": …}.
func conversationRef(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var ref struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &ref)
	return ref.ID
}

func (c *conversation) object() map[string]any {
	md := c.metadata
	if md == nil {
		md = map[string]string{}
	}
	return map[string]any{"id": c.id, "object": "conversation", "created_at": c.created, "metadata": md}
}

// ordered is a copy of items in the order the request asks: newest first
// unless order=asc.
func ordered(items []json.RawMessage, r *http.Request) []json.RawMessage {
	data := slices.Clone(items)
	if r.URL.Query().Get("order") != "asc" {
		slices.Reverse(data)
	}
	return data
}

// itemList is a list page of items (all of them: one page).
func itemList(data []json.RawMessage) map[string]any {
	list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if n := len(data); n > 0 {
		var first, last struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(data[0], &first)
		_ = json.Unmarshal(data[n-1], &last)
		list["first_id"], list["last_id"] = first.ID, last.ID
	}
	if data == nil {
		list["data"] = []json.RawMessage{}
	}
	return list
}

// conversationsCall answers every route of the Conversations API.
func (s *Server) conversationsCall(w http.ResponseWriter, r *http.Request) {
	key, id, sub, item := apiKey(r), r.PathValue("id"), r.PathValue("sub"), r.PathValue("item")
	var body struct {
		Items    []map[string]any  `json:"items"`
		Metadata map[string]string `json:"metadata"`
	}
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeError(w, flavorOpenAI, http.StatusBadRequest, "We could not parse the JSON body of your request.")
			return
		}
	}
	cs := &s.convs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byID == nil {
		cs.byID = map[string]*conversation{}
	}
	var v any
	if id == "" { // POST /v1/conversations
		c := &conversation{key: key, id: "conv_" + newResponseID()[len("resp_"):], created: time.Now().Unix(), metadata: body.Metadata}
		c.items = cs.withIDs(body.Items)
		cs.byID[c.id] = c
		writeReport(w, c.object())
		return
	}
	c := cs.get(key, id)
	if c == nil {
		writeError(w, flavorOpenAI, http.StatusNotFound, "Conversation with id '"+id+"' not found.")
		return
	}
	find := func() int {
		return slices.IndexFunc(c.items, func(b json.RawMessage) bool {
			var it struct {
				ID string `json:"id"`
			}
			return json.Unmarshal(b, &it) == nil && it.ID == item
		})
	}
	switch {
	case sub == "" && r.Method == http.MethodGet:
		v = c.object()
	case sub == "" && r.Method == http.MethodPost:
		c.metadata = body.Metadata
		v = c.object()
	case sub == "" && r.Method == http.MethodDelete:
		delete(cs.byID, id)
		v = map[string]any{"id": id, "object": "conversation.deleted", "deleted": true}
	case sub == "items" && item == "" && r.Method == http.MethodGet:
		v = itemList(ordered(c.items, r))
	case sub == "items" && item == "" && r.Method == http.MethodPost:
		added := cs.withIDs(body.Items)
		c.items = append(c.items, added...)
		v = itemList(added)
	case sub == "items" && item != "" && r.Method == http.MethodGet:
		i := find()
		if i < 0 {
			writeError(w, flavorOpenAI, http.StatusNotFound, "Item with id '"+item+"' not found.")
			return
		}
		v = c.items[i]
	case sub == "items" && item != "" && r.Method == http.MethodDelete:
		i := find()
		if i < 0 {
			writeError(w, flavorOpenAI, http.StatusNotFound, "Item with id '"+item+"' not found.")
			return
		}
		c.items = slices.Delete(c.items, i, i+1)
		v = c.object()
	default:
		writeError(w, flavorOpenAI, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	writeReport(w, v)
}
