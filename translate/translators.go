package translate

// translators is the gateway's translation table: for each client API (rows
// grouped by it) and provider type, the translator that serves the one from
// the other. A pair not listed is unsupported: the processor answers 400 for
// it. Every pair here has golden cases in testdata (TestTranslatorTableGolden).
var translators = map[translatorKey]TranslatorFactory{
	// OpenAI chat completions (POST /v1/chat/completions)
	{APIChat, ProviderOpenAI}:    func() Translator { return chatOpenAIs.get() },
	{APIChat, ProviderAzure}:     func() Translator { return chatAzures.get() },
	{APIChat, ProviderAnthropic}: func() Translator { return chatAnthropics.get() },
	{APIChat, ProviderGemini}:    func() Translator { return new(chatGemini) },
	{APIChat, ProviderBedrock}:   func() Translator { return new(chatBedrock) },
	{APIChat, ProviderVertex}:    func() Translator { return &vertexTranslator{api: APIChat} },

	// OpenAI completions (POST /v1/completions)
	{APICompletions, ProviderOpenAI}:  func() Translator { return completionsOpenAIs.get() },
	{APICompletions, ProviderAzure}:   func() Translator { return new(completionsAzure) },
	{APICompletions, ProviderGemini}:  func() Translator { return newCompletionsViaChat(new(chatGemini)) },
	{APICompletions, ProviderBedrock}: func() Translator { return newCompletionsViaChat(new(chatBedrock)) },
	{APICompletions, ProviderVertex}:  func() Translator { return newCompletionsViaChat(&vertexTranslator{api: APIChat}) },

	// OpenAI embeddings (POST /v1/embeddings)
	{APIEmbeddings, ProviderOpenAI}:  func() Translator { return embeddingsOpenAIs.get() },
	{APIEmbeddings, ProviderAzure}:   func() Translator { return new(embeddingsAzure) },
	{APIEmbeddings, ProviderGemini}:  func() Translator { return new(embeddingsGemini) },
	{APIEmbeddings, ProviderBedrock}: func() Translator { return new(embeddingsBedrock) },
	{APIEmbeddings, ProviderVertex}:  func() Translator { return new(embeddingsVertex) },

	// OpenAI Responses (POST /v1/responses)
	{APIResponses, ProviderOpenAI}:    func() Translator { return new(responsesOpenAI) },
	{APIResponses, ProviderAzure}:     func() Translator { return &responsesNative{azure: true} },
	{APIResponses, ProviderAnthropic}: func() Translator { return newResponsesViaChat(new(chatAnthropic)) },
	{APIResponses, ProviderGemini}:    func() Translator { return newResponsesViaChat(new(chatGemini)) },
	{APIResponses, ProviderBedrock}:   func() Translator { return newResponsesViaChat(new(chatBedrock)) },
	{APIResponses, ProviderVertex}:    func() Translator { return newResponsesViaChat(&vertexTranslator{api: APIChat}) },

	// Anthropic Messages (POST /v1/messages)
	{APIMessages, ProviderAnthropic}: func() Translator { return messagesAnthropics.get() },
	{APIMessages, ProviderOpenAI}:    func() Translator { return messagesOpenAIs.get() },
	{APIMessages, ProviderAzure}:     azureMessages,
	{APIMessages, ProviderGemini}:    func() Translator { return new(messagesGemini) },
	{APIMessages, ProviderBedrock}:   func() Translator { return new(messagesBedrock) },
	{APIMessages, ProviderVertex}:    func() Translator { return &vertexTranslator{api: APIMessages} },

	// Anthropic count_tokens (POST /v1/messages/count_tokens)
	{APIMessagesCount, ProviderAnthropic}: func() Translator { return &messagesAnthropic{count: true} },
	{APIMessagesCount, ProviderOpenAI}:    func() Translator { return countTokensEstimate{} },
	{APIMessagesCount, ProviderAzure}:     func() Translator { return countTokensEstimate{} },
	{APIMessagesCount, ProviderGemini}:    func() Translator { return countTokensEstimate{} },
	{APIMessagesCount, ProviderBedrock}:   func() Translator { return new(countTokensBedrock) },
	{APIMessagesCount, ProviderVertex}:    func() Translator { return &vertexTranslator{api: APIMessagesCount} },

	// Gemini generateContent / streamGenerateContent (POST /v1beta/models/{m}:…)
	{APIGeminiGenerate, ProviderGemini}:    func() Translator { return new(generateGemini) },
	{APIGeminiGenerate, ProviderVertex}:    func() Translator { return &vertexTranslator{api: APIGeminiGenerate} },
	{APIGeminiGenerate, ProviderOpenAI}:    func() Translator { return new(generateOpenAI) },
	{APIGeminiGenerate, ProviderAzure}:     func() Translator { return &generateOpenAI{azure: true} },
	{APIGeminiGenerate, ProviderAnthropic}: func() Translator { return new(generateAnthropic) },
	{APIGeminiGenerate, ProviderBedrock}:   func() Translator { return new(generateBedrock) },

	// Gemini countTokens (POST /v1beta/models/{m}:countTokens)
	{APIGeminiCount, ProviderGemini}:    func() Translator { return &generateGemini{count: true} },
	{APIGeminiCount, ProviderVertex}:    func() Translator { return &vertexTranslator{api: APIGeminiCount} },
	{APIGeminiCount, ProviderOpenAI}:    func() Translator { return geminiCountEstimate{} },
	{APIGeminiCount, ProviderAzure}:     func() Translator { return geminiCountEstimate{} },
	{APIGeminiCount, ProviderAnthropic}: func() Translator { return geminiCountEstimate{} },
	{APIGeminiCount, ProviderBedrock}:   func() Translator { return new(geminiCountBedrock) },

	// The routes charged per unit (units.go): images, audio, moderations
	// (OpenAI, OpenAI-compatible, Azure OpenAI) and rerank (Cohere's and
	// Jina's shape, from an OpenAI-compatible provider whose base URL is theirs);
	// image generations from Imagen on the Gemini API and Vertex AI
	// (images_gemini.go).
	{APIImages, ProviderOpenAI}:         newUnitsOpenAI(APIImages, false),
	{APIImages, ProviderAzure}:          newUnitsOpenAI(APIImages, true),
	{APIImages, ProviderGemini}:         func() Translator { return new(imagesGemini) },
	{APIImages, ProviderVertex}:         func() Translator { return new(imagesGemini) },
	{APIModerations, ProviderOpenAI}:    newUnitsOpenAI(APIModerations, false),
	{APIModerations, ProviderAzure}:     newUnitsOpenAI(APIModerations, true),
	{APISpeech, ProviderOpenAI}:         newUnitsOpenAI(APISpeech, false),
	{APISpeech, ProviderAzure}:          newUnitsOpenAI(APISpeech, true),
	{APIRerank, ProviderOpenAI}:         newUnitsOpenAI(APIRerank, false),
	{APIImageEdits, ProviderOpenAI}:     newUnitsOpenAI(APIImageEdits, false),
	{APIImageEdits, ProviderAzure}:      newUnitsOpenAI(APIImageEdits, true),
	{APIImageEdits, ProviderVertex}:     func() Translator { return &imagesGemini{edit: true} },
	{APITranscriptions, ProviderOpenAI}: newUnitsOpenAI(APITranscriptions, false),
	{APITranscriptions, ProviderAzure}:  newUnitsOpenAI(APITranscriptions, true),
	{APITranslations, ProviderOpenAI}:   newUnitsOpenAI(APITranslations, false),
	{APITranslations, ProviderAzure}:    newUnitsOpenAI(APITranslations, true),
}

// TranslatorFactory makes a Translator for one request (the common pairs'
// from a pool: translator_pool.go).
type TranslatorFactory func() Translator

// translatorKey is a row of the table: client API × provider type.
type translatorKey struct {
	api      API
	provider ProviderType
}

// NewTranslator returns a translator for the pair, or nil when unsupported.
func NewTranslator(api API, p ProviderType) Translator {
	if f, ok := translators[translatorKey{api, p}]; ok {
		return f()
	}
	return nil
}

// Pair is a row of the table: a client API served from a provider type.
type Pair struct {
	API      API
	Provider ProviderType
}

// Pairs lists every row of the table, in no particular order (the
// processor's tests walk them all).
func Pairs() []Pair {
	out := make([]Pair, 0, len(translators))
	for k := range translators {
		out = append(out, Pair{k.api, k.provider})
	}
	return out
}
