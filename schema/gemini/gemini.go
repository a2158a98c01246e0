package gemini

import "encoding/json"

// Roles of a Content.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// GenerateContentRequest is the body of models/{m}:generateContent and
// :streamGenerateContent (the model is in the path).
type GenerateContentRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	SafetySettings    json.RawMessage   `json:"safetySettings,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	CachedContent     string            `json:"cachedContent,omitempty"`
	// Model is set only inside countTokens' generateContentRequest
	// ("models/{m}").
	Model string `json:"model,omitempty"`
}

// Content is one turn: a role and its parts.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a Content; exactly one of its data fields is set.
type Part struct {
	Text             string            `json:"text,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	// Thought marks a part as the model's thinking (a summary, when
	// thinkingConfig.includeThoughts is set).
	Thought          bool   `json:"thought,omitempty"`
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

// Blob is inline bytes (base64 in JSON).
type Blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData refers to a file by URI.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a call the model asks for; Args is a JSON object.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is the result of a call; Response is a JSON object.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool is a set of function declarations (other tool kinds, such as
// googleSearch or codeExecution, pass as raw members of the request).
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
}

// FunctionDeclaration declares a function; Parameters is an OpenAPI schema
// object, ParametersJSONSchema a JSON Schema.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// Function calling modes.
const (
	ModeAuto = "AUTO"
	ModeAny  = "ANY"
	ModeNone = "NONE"
)

// ToolConfig configures function calling.
type ToolConfig struct {
	FunctionCallingConfig *FunctionCallingConfig `json:"functionCallingConfig,omitempty"`
}

// FunctionCallingConfig: Mode AUTO, ANY (a call is required, limited to
// AllowedFunctionNames when set) or NONE.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode,omitempty"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig are the sampling and output options.
type GenerationConfig struct {
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	CandidateCount     *int64          `json:"candidateCount,omitempty"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ThinkingConfig     *ThinkingConfig `json:"thinkingConfig,omitempty"`
}

// ThinkingConfig bounds the thinking of thinking models: ThinkingBudget in
// tokens (0 off, -1 dynamic); IncludeThoughts returns thought summaries.
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
}

// GenerateContentResponse is a reply, or one event of a stream.
type GenerateContentResponse struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one generated answer.
type Candidate struct {
	Content       *Content        `json:"content,omitempty"`
	FinishReason  string          `json:"finishReason,omitempty"`
	Index         int64           `json:"index"`
	SafetyRatings json.RawMessage `json:"safetyRatings,omitempty"`
	FinishMessage string          `json:"finishMessage,omitempty"`
}

// Finish reasons of a Candidate.
const (
	FinishStop                  = "STOP"
	FinishMaxTokens             = "MAX_TOKENS"
	FinishSafety                = "SAFETY"
	FinishRecitation            = "RECITATION"
	FinishLanguage              = "LANGUAGE"
	FinishOther                 = "OTHER"
	FinishBlocklist             = "BLOCKLIST"
	FinishProhibitedContent     = "PROHIBITED_CONTENT"
	FinishSPII                  = "SPII"
	FinishMalformedFunctionCall = "MALFORMED_FUNCTION_CALL"
	FinishImageSafety           = "IMAGE_SAFETY"
	FinishUnexpectedToolCall    = "UNEXPECTED_TOOL_CALL"
	FinishTooManyToolCalls      = "TOO_MANY_TOOL_CALLS"
)

// PromptFeedback says why a prompt was blocked (no candidates then).
type PromptFeedback struct {
	BlockReason   string          `json:"blockReason,omitempty"`
	SafetyRatings json.RawMessage `json:"safetyRatings,omitempty"`
}

// UsageMetadata is a reply's token usage. PromptTokenCount includes
// CachedContentTokenCount; CandidatesTokenCount excludes ThoughtsTokenCount;
// ToolUsePromptTokenCount is input consumed by tools (search, code).
type UsageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount,omitempty"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount,omitempty"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int64 `json:"totalTokenCount,omitempty"`
}

// CountTokensRequest is the body of models/{m}:countTokens: either Contents
// or a whole GenerateContentRequest.
type CountTokensRequest struct {
	Contents               []Content               `json:"contents,omitempty"`
	GenerateContentRequest *GenerateContentRequest `json:"generateContentRequest,omitempty"`
}

// CountTokensResponse is countTokens' reply.
type CountTokensResponse struct {
	TotalTokens             int64 `json:"totalTokens"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
}

// EmbedContentRequest is the body of models/{m}:embedContent and one entry
// of batchEmbedContents (Model "models/{m}" is required there).
type EmbedContentRequest struct {
	Model                string  `json:"model,omitempty"`
	Content              Content `json:"content"`
	TaskType             string  `json:"taskType,omitempty"`
	Title                string  `json:"title,omitempty"`
	OutputDimensionality *int64  `json:"outputDimensionality,omitempty"`
}

// BatchEmbedContentsRequest is the body of models/{m}:batchEmbedContents.
type BatchEmbedContentsRequest struct {
	Requests []EmbedContentRequest `json:"requests"`
}

// ContentEmbedding is one vector.
type ContentEmbedding struct {
	Values []float64 `json:"values"`
}

// EmbedContentResponse is embedContent's reply (the Gemini API reports no
// usage for embeddings).
type EmbedContentResponse struct {
	Embedding ContentEmbedding `json:"embedding"`
}

// BatchEmbedContentsResponse is batchEmbedContents' reply.
type BatchEmbedContentsResponse struct {
	Embeddings []ContentEmbedding `json:"embeddings"`
}

// Model is one entry of models.list.
type Model struct {
	Name                       string   `json:"name"` // "models/{id}"
	BaseModelID                string   `json:"baseModelId,omitempty"`
	Version                    string   `json:"version,omitempty"`
	DisplayName                string   `json:"displayName,omitempty"`
	Description                string   `json:"description,omitempty"`
	InputTokenLimit            int64    `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit           int64    `json:"outputTokenLimit,omitempty"`
	SupportedGenerationMethods []string `json:"supportedGenerationMethods,omitempty"`
}

// ListModelsResponse is models.list's reply.
type ListModelsResponse struct {
	Models        []Model `json:"models"`
	NextPageToken string  `json:"nextPageToken,omitempty"`
}

// ErrorResponse is Google's error shape (google.rpc.Status in JSON):
// {"error":{"code":429,"message":"…","status":"RESOURCE_EXHAUSTED"}}.
type ErrorResponse struct {
	Error Status `json:"error"`
}

// Status is the error itself; Code is the HTTP status.
type Status struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Status  string          `json:"status"`
	Details json.RawMessage `json:"details,omitempty"`
}

// StatusOf is the canonical google.rpc.Code name Google's APIs pair with an
// HTTP status (https://cloud.google.com/apis/design/errors#handling_errors).
func StatusOf(httpStatus int) string {
	switch httpStatus {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 413:
		return "INVALID_ARGUMENT"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	default:
		if httpStatus >= 500 {
			return "INTERNAL"
		}
		return "FAILED_PRECONDITION"
	}
}
