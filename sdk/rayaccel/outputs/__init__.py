"""What the inventory becomes for its consumers: documents, expositions and exports. Pure functions of the
inventory; nothing here calls a plugin."""
