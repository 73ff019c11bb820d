/**
 * Set-up's last step (scripts/setup.sh warm_corpus): the built-in research corpus's MiniLM vectors,
 * computed once into the embedder's cache in the venv, where every process reads them. A
 * workspace's first research brief then embeds only its query.
 */
import { MiniLmEmbedder, miniLmInstalled } from "../core/embedder-minilm.js";
import { builtinTexts } from "../research/corpus-index.js";

// The embedder's child is unref'd and ends with this process, once the vectors are in the file.
if (miniLmInstalled()) await new MiniLmEmbedder().embed(builtinTexts());
