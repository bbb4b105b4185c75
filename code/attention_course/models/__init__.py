"""Models: task-free networks built from the layers (sizes are constructor arguments).

``seq2seq`` (the plain RNN encoder-decoder), ``rnn_attention`` (the RNN attention decoder),
``transformer``, ``pronoun`` (the pronoun resolver), ``classifier`` (the explanation classifier),
``retrieval`` (one attention head trained to retrieve), ``set_transformer``, ``forecast``,
``conv_attention`` (a convolution written as attention). Nothing here imports a task.
"""
