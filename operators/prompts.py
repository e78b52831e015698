"""Prompts of BookRAG's agent (appendix A.3, Figures 10–12), written out from the paper, plus the
extraction, section-selection, map and grounded-answer prompts the paper describes but does not print.
Each is paired with a pydantic schema so the LLM client validates the reply."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

CLASSIFY = """You are an expert query analyzer. Your only task is to classify the user's question into one of three categories: "single-hop", "multi-hop", or "global". Respond only with the specified JSON object {{"category": "..."}}.

Category Definitions:
1. single-hop: The question can be fully answered by retrieving information from a SINGLE, contiguous location in the document (e.g., one specific paragraph, one complete table, or one figure).
- This includes questions that require reasoning or comparison, as long as all the necessary data is present within that single retrieved location.
- Example: "What is the title of Figure 2?"
- Example: "How do 5% of the Latinos see economic upward mobility for their children?" -> This is single-hop because the answer can be found by looking at a single chart or paragraph.
2. multi-hop: The question requires decomposition into multiple simple sub-questions, where each sub-question must be answered by a separate retrieval action.
- It often contains a nested or indirect constraint that requires a preliminary step to resolve before the main question can be answered.
- Example: "What is the color of the personality vector...?" -> This is multi-hop because it requires two separate retrieval actions.
3. global: The question requires an aggregation operation (e.g., counting, listing, summarizing) over a set of items that are identified by a clear structural filter.
- Example: "How many tables are in the document?" -> This is global because the process is to filter for all items of type 'table'.

User Query: {query}"""


class Classification(BaseModel):
    category: Literal["single-hop", "multi-hop", "global", "simple", "complex"]


DECOMPOSE = """You are a query decomposition expert. You have been given a "complex" question. Your task is to break it down into a series of simple, atomic sub-questions and classify each one by type.
**Crucial Instructions:**
1. Each `retrieval` sub-question MUST be a direct information retrieval task that can be answered independently by looking up a specific fact, number, or value in the document.
2. **`retrieval` sub-questions MUST NOT depend on the answer of another sub-question.** They should be parallelizable. All logic for combining their results must be placed in a final `synthesis` question.
3. A `synthesis` question requires comparing, calculating, or combining the answers of the previous `retrieval` questions. It does **NOT** require a new lookup in the document.
You MUST provide your response in a JSON object with a single key 'sub_questions', which contains a list of objects. Each object must have a 'question' (string) and a 'type' (string: "retrieval" or "synthesis").
--- EXAMPLE 1 (Correct Decomposition with Independent Lookups) ---
Complex Query: "What is the color of the personality vector in the soft-labeled personality embedding matrix that with the highest Receptiviti score for User A2GBIFL43U1LKJ?"
Expected JSON Output:
{{"sub_questions": [{{"question": "What are all the Receptiviti scores for each personality vector for User A2GBIFL43U1LKJ?", "type": "retrieval"}}, {{"question": "What is the mapping of personality vectors to their colors in the soft-labeled personality embedding matrix?", "type": "retrieval"}}, {{"question": "From the gathered scores, identify the personality vector with the highest score, and then find its corresponding color from the vector-to-color mapping.", "type": "synthesis"}}]}}
--- END EXAMPLE 1 ---
--- EXAMPLE 2 (Decomposition with retrieval and synthesis steps) ---
Complex Query: "According to the report, which one is greater in population in the survey? Foreign born Latinos, or the Latinos interviewed by cellphone?"
Expected JSON Output:
{{"sub_questions": [{{"question": "According to the report, what is the population of foreign born Latinos in the survey?", "type": "retrieval"}}, {{"question": "According to the report, what is the population of Latinos interviewed by cellphone in the survey?", "type": "retrieval"}}, {{"question": "Which of the two population counts is greater?", "type": "synthesis"}}]}}
--- END EXAMPLE 2 ---
Now, perform the decomposition for the following query.
User Query: {query}"""


class SubQuestion(BaseModel):
    question: str
    type: Literal["retrieval", "synthesis"] = "retrieval"


class Decomposition(BaseModel):
    sub_questions: list[SubQuestion]


FILTERS = """You are a highly specialized AI assistant. Your only function is to analyze a "Global Query" and return a single, valid JSON object that specifies both the filtering steps and the final aggregation operation. You MUST NOT output any other text or explanation.
## INSTRUCTIONS & DEFINITIONS
1. **Filters**: You MUST determine the list of `filters` to apply. Even if the filter is for the whole document (e.g., all tables), the `filters` list must be present.
- `filter_type`: One of ["section", "image", "table", "page"].
- `section`: Use for structural parts like chapters, sections, appendices, or references.
- `image`: Use for visual elements like figures, images, pictures, or plots.
- `table`: Use for tabular data.
- `page`: Use for specific page numbers or ranges.
- `filter_value`: (Optional) Can be provided for "section" (e.g., a section title) or "page" (e.g., '3-10' or '5'). For "image" or "table", this value MUST be null.
2. **Operation**: Determine the final aggregation operation.
- `operation`: One of ["COUNT", "LIST", "SUMMARIZE", "ANALYZE"]
## EXAMPLES OF YOUR TASK
User: "How many figures are in this paper from Page 3 to Page 10?"
Assistant: {{"filters": [{{"filter_type": "page", "filter_value": "3-10"}}, {{"filter_type": "image"}}], "operation": "COUNT"}}
User: "Summarize the discussion about 'data augmentation' in the 'Methodology' section."
Assistant: {{"filters": [{{"filter_type": "section", "filter_value": "Methodology"}}], "operation": "SUMMARIZE"}}
User: "How many chapters are in this report?"
Assistant: {{"filters": [{{"filter_type": "section"}}], "operation": "COUNT"}}
## YOUR CURRENT TASK
User Query: {query}"""


class FilterSpec(BaseModel):
    filter_type: Literal["section", "image", "table", "page"]
    filter_value: str | None = None


class GlobalSpec(BaseModel):
    filters: list[FilterSpec] = Field(default_factory=list)
    operation: Literal["COUNT", "LIST", "SUMMARIZE", "ANALYZE"] = "SUMMARIZE"


EXTRACT = """Extract the key entities of the question below: the specific things, concepts, names, methods, products, tables or figures it asks about, as they would be named in the document. Do not include generic words such as "document", "report" or "page". Return JSON {{"entities": [{{"name": "...", "type": "..."}}]}} with at most {max_entities} entities, most important first.

Question: {query}"""


class ExtractedEntity(BaseModel):
    name: str
    type: str = "concept"


class Extraction(BaseModel):
    entities: list[ExtractedEntity] = Field(default_factory=list)


SELECT_SECTIONS = """Below is the table of contents of a document, one section per line as "[number] title (pages)". Choose the sections most likely to contain the answer to the question. Return JSON {{"sections": [numbers]}} with at most {max_sections} numbers, best first.

Table of contents:
{toc}

Question: {query}"""


class SectionChoice(BaseModel):
    sections: list[int] = Field(default_factory=list)


NOT_FOUND = "not found in this evidence"  # what a partial answer says without one (MAP)

# Laid out as ANSWER is (instructions, evidence, the question last) and for the same reason: with
# the question first and the evidence after it, the 1.5B model said "not found" to both parts of a
# two-part question whose evidence held each (docs/benchmarks-log.md, "Two-part questions").
MAP = f"""Write a short partial answer to the question from the numbered evidence below, using only that evidence, then the numbers of the evidence items it comes from in square brackets, like [1] or [2][3], and list those numbers in "citations". Only if no evidence item is about the question at all, say "{NOT_FOUND}".

Evidence:
{{evidence}}

Question: {{query}}"""


class Partial(BaseModel):
    answer: str
    # as in Grounded: the numbers as data, written into the answer when its prose cites none, so
    # that a merged answer can be checked for leaving a part's evidence out (`answered_parts`)
    citations: list[int] = Field(default_factory=list)


# The instructions first (the prefix every answer call shares, which llama.cpp's KV cache keeps),
# the question last: a small model answers the last thing it read. The refusal is worded as a last
# resort: "reply exactly ..." made the 1.5B model refuse 16 of 18 MMLongBench questions whose
# evidence held the answer (docs/benchmarks.md, "Answer prompt").
ANSWER = """Answer the question from the numbered evidence from the document below, using only that evidence. Give the answer first, in as few words as possible (a number, a name, a short phrase or a list), then the numbers of the evidence items it comes from in square brackets, like [1] or [2][3], and list those numbers in "citations". Only if no evidence item is about the question at all, answer "not answerable from the document".

Evidence:
{evidence}

Question: {query}"""

# appended to an answer prompt whose reply broke the citation rule (operators.grounding)
REPAIR_CITATIONS = """

Your previous answer was:
{answer}

It {problem}. Rule: cite every claim with the numbers of the evidence items it comes from, in square brackets like [1] or [2][3]; only numbers shown above ({allowed}) exist. Rewrite the answer following the rule."""

REDUCE = """Combine the partial answers below into one final answer to the question. Keep their citations [n] as they are and use no other knowledge. If they do not contain the answer, reply exactly "not answerable from the document".

Question: {query}

Partial answers:
{partials}"""


class Grounded(BaseModel):
    answer: str
    # the evidence numbers again, as data: small models fill a field more reliably than they
    # write [n] into prose; operators.grounding adds them to an answer that cites nothing inline
    citations: list[int] = Field(default_factory=list)


def grounded_from_prose(text: str) -> Grounded | None:
    """A plain-words reply to the answer prompt read as its answer (citations stay inline [n], which
    operators.grounding checks). Small models often drop the JSON wrapper and answer correctly;
    a reply that tried JSON (holds "{") or is empty is declined, so the client's repair runs."""
    body = text.strip()
    if not body or "{" in body:
        return None
    return Grounded(answer=body)
