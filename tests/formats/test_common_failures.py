"""What stopped public n8n, LangFlow and Flowise RAG exports from validating after ``--local`` (found by measuring the
LangFlow starter projects of 1.3-1.12 and 331 n8n.io RAG templates, none of them the held-out set), each
fixed as a general rule and checked here on a corpus file or a small fixture.
"""

from __future__ import annotations

from pathlib import Path

from flowbuilder.formats.convert import import_file
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver

CORPUS = Path(__file__).parent / "corpus_public"
FIXTURES = Path(__file__).parent / "fixtures"


def _issues(path: Path) -> list[str]:
    flow, _ = import_file(path, local=True)
    return [str(i) for i in analyze(flow, resolver=CredentialResolver(), base_dir=path.parent).issues]


def test_a_langflow_note_saved_without_a_component_type_is_a_note() -> None:
    flow, report = import_file(CORPUS / "langflow__lf1.12_basic_prompting.json")
    assert flow.notes and report.notes == len(flow.notes)
    assert any("README" in note.text for note in flow.notes)


def test_a_prompt_variable_takes_the_value_typed_in_langflow_and_a_prompt_feeds_the_agents_system() -> None:
    path = CORPUS / "langflow__lf1.12_twitter_thread_generator.json"
    flow, report = import_file(path)
    prompt = flow.node("Prompt-DC9aA")
    assert "Tech Company / AI Developer Platform" in prompt.config["template"]  # PROFILE_TYPE's typed value
    assert any("take the value typed in LangFlow" in w for w in report.warnings)
    assert "Prompt-DC9aA.prompt->Agent-wh9WY.system" in {e.key for e in flow.edges}
    assert _issues(path) == []


def test_a_kept_chat_history_that_only_fills_a_prompt_variable_is_empty_offline() -> None:
    path = CORPUS / "langflow__lf1.9_memory_chatbot.json"
    flow, report = import_file(path, local=True)
    kept = next(n for n in flow.nodes if n.config.get("original_type") == "Memory")
    assert not [e for e in flow.edges if kept.id in (e.source, e.target)]
    assert any(s.node == kept.id and "empty text" in s.detail for s in report.local_swaps)
    assert _issues(path) == []


def test_langflow_knowledge_ingestion_and_retrieval_become_chroma_offline() -> None:
    path = CORPUS / "langflow__lf1.9_vector_store_rag.json"
    flow, _ = import_file(path, local=True)
    ingest = next(n for n in flow.nodes if n.id.startswith("KnowledgeIngestion"))
    assert ingest.type == "vectorstore.chroma"
    assert any(e.target == ingest.id and e.target_port == "documents" for e in flow.edges)  # its input_df
    assert _issues(path) == []


def test_n8n_message_triggers_llm_chains_and_out_of_range_settings() -> None:
    path = FIXTURES / "n8n_telegram_llm_chain.json"  # not in fixtures/n8n: our n8n export writes no Basic LLM Chain
    flow, report = import_file(path, local=True)
    assert flow.node("telegram-trigger").type == "chat.input"
    chain = flow.node("basic-llm-chain")
    assert chain.type == "prompt.template" and chain.config["template"].endswith("{question}")
    assert "You answer questions about our test cases" in chain.config["template"]
    edges = {e.key for e in flow.edges}
    assert {
        "telegram-trigger.message->basic-llm-chain.question",
        "basic-llm-chain.prompt->openai-chat-model.prompt",
    } <= edges
    assert flow.node("qdrant-vector-store-tool").config["k"] == 100  # n8n's topK 500, the most ours takes
    assert any(i.parameter == "topK" and "100 is used" in i.detail for i in report.not_carried)
    assert "collection" not in flow.node("qdrant-vector-store").config  # an unpicked collection is not ''
    assert not [e for e in edges if "send-answer" in e]  # the Telegram reply at the end: unwired offline
    assert _issues(path) == []


def test_a_flowise_conversation_chain_asks_its_model_through_the_chat_prompt_template_it_is_given() -> None:
    """A conversation chain given a chat prompt template (system + human message with {{question}}): the
    template is the model's prompt, the chat question fills {question}, the template's system message replaces
    the chain's default one, and a variable nothing feeds ({chat_history}) is an empty text with a report line."""
    path = CORPUS / "flowise__manissssha1_business_decision_simulator_chatflow.json"
    flow, report = import_file(path, local=True)
    edges = {e.key for e in flow.edges}
    assert "chatPromptTemplate_0.prompt->chatOpenAI_0.prompt" in edges
    assert "chat-input.message->chatPromptTemplate_0.question" in edges
    assert "You are a business consultant chatbot." in flow.node("chatPromptTemplate_0").config["template"]
    assert "friendly conversation" not in flow.node("chatOpenAI_0").config.get("system_message", "")
    assert any("{chat_history} fed by nothing" in w for w in report.warnings)
    assert _issues(path) == []


def test_a_flowise_ollama_llm_keeps_its_model_and_local_asks_this_machines_server() -> None:
    """Flowise's Ollama LLM node (not the chat model) was a placeholder that ``--local`` swapped for the default
    model, losing the user's ``llama3.2:1b``; it is an Ollama model here. Its server, a Docker service
    (``http://ollama:11434``), is dropped by ``--local`` (with a report line) so the flow validates instead of
    naming a host nobody approved; without ``--local`` the user's server is kept."""
    path = CORPUS / "flowise__artembaranovsky_ollama_rag_chatflow.json"
    plain, _ = import_file(path)
    assert plain.node("ollama_0").type == "llm.ollama"
    assert plain.node("ollama_0").config["base_url"] == "http://ollama:11434"
    flow, report = import_file(path, local=True)
    model = flow.node("ollama_0")
    assert (model.type, model.config["model"]) == ("llm.ollama", "llama3.2:1b")
    assert "base_url" not in model.config
    assert any(s.parameter == "base_url" and "http://ollama:11434" in s.detail for s in report.local_swaps)
    assert "memoryVectorStore_0.hits->retrievalQAChain_0.context" in {e.key for e in flow.edges}
    assert _issues(path) == []
