"""Reading and writing flows: the native format here, n8n and LangFlow in their own modules."""
