"""The NiceGUI visual builder (the only package that imports nicegui). Entry: :func:`flowbuilder.ui.app.register_pages`."""
