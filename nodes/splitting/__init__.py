"""Text-splitting algorithms behind the splitter nodes (pure functions, no node classes).

``textsplit`` reproduces LangChain's ``CharacterTextSplitter`` and ``RecursiveCharacterTextSplitter``
exactly (same chunks for the same settings) while tracking each chunk's character offsets;
``markdown`` cuts a markdown text into heading sections.
"""
